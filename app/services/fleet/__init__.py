"""The fleet: what a hub knows of many nodes and the questions it answers over them.

``agent_summary`` is the agent contract (what each agent reports of its nodes); ``hub``,
``agents`` and ``fanout`` follow agents and ask them; ``workers`` runs the demo fleet's
CPU-bound work in worker processes; ``score`` ranks fits; ``rows``, ``views`` and ``heatmap``
render the fleet; ``jobs`` carries upgrade readiness over the whole fleet in one call.
"""
