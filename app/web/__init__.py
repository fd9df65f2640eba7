"""The web face: FastAPI app factory, routers, rendering and error handling."""
