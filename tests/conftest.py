"""Shared fixtures. Tests read as given / when / then."""
