"""A cheap password hash for the test process (Django's advice for test suites: the default PBKDF2 takes ~0.3 s a
hash, and the login tests hash dozens). It is Django's own PBKDF2 with fewer rounds: the rounds are written in each
hash, so the servers the tests start (the product's hashers) still verify the passwords it made."""
from django.contrib.auth.hashers import PBKDF2PasswordHasher


class FewRoundsPBKDF2(PBKDF2PasswordHasher):
    iterations = 1_000
