"""The twin's capabilities, one package each (collectives, storage, jobs, failures, debug, calibration): everything
a capability adds to the twin lives in its package and is found by :mod:`twin.discovery`, never listed in shared code.
This is the top layer: a capability imports the runs, live and web layers; none of them imports a capability.
"""
