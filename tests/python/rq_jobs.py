"""Job functions for test_rq.py (rq's workers import them by module path)."""

import os


def add(a, b):
    return a + b


def flaky(flag_path):
    """Fails while `flag_path` exists."""
    if os.path.exists(flag_path):
        raise ValueError("the flag file exists")
    return "recovered"
