"""Failures over time: the failures run kind (a long job's timeline) and the Reliability page."""
