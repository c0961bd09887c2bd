"""Debugging rehearsals: the debug and startup run kinds and the Debug page."""
