"""Adapters: the only code that touches disk, sysfs, sockets or the database."""
