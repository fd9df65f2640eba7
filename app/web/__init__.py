"""FastAPI application: pages, fragments and the JSON API."""
