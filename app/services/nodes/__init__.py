"""Nodes: every kind of node the dashboard and the hub show, behind one interface.

``source`` is the ``NodeSource`` protocol (name, views, summary, PodResources, dry run, upgrade
verdict, restart rehearsal; admit, remove and restart where the source is writable) and
``catalog`` maps names to sources. The sources: stored simulated nodes (``stored``, over the
``service`` with its registry, store, reads and restarts), the observed node (``observed``), the
hub's demo-fleet nodes (``demo_fleet``) and a remote agent's nodes (``remote``). ``judge`` is the one function
that judges a set of pods against a node, for admission, dry run and fleet fit.
"""
