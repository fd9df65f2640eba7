"""HTTP routers: ``pages`` (HTML and JSON twins), ``api`` (/api/v1), ``ops`` (health, metrics)."""
