"""The ground every capability stands on: parameter declarations (:mod:`~sim.core.params`), units, errors,
progress, memory hints, and the one flow core (the max-min solver, flow sets, event-driven flows) that
every model allocates bandwidth through. It imports no other package of :mod:`sim`.
"""
