"""Shared pytest configuration: the hypothesis profiles."""

import os

from hypothesis import settings

# no deadline: a 2-core CI machine is slow and noisy; a moderate number of examples keeps the suite fast
# derandomize: CI runs the same examples every time, so a red run is a regression, not luck
settings.register_profile("ci", deadline=None, max_examples=40, print_blob=True, derandomize=True)
# HYPOTHESIS_PROFILE=explore: fresh random examples each run
settings.register_profile("explore", deadline=None, max_examples=40, print_blob=True)
# HYPOTHESIS_PROFILE=thorough for a longer local hunt
settings.register_profile("thorough", deadline=None, max_examples=500)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
