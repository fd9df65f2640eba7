"""Database adapter: engine and sessions (``engine.py``) and SQLModel tables (``models.py``)."""
