"""HTTP edge for the game provider: pydantic schemas and routes, no game rules."""
