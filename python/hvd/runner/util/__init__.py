"""Helpers of Horovod's horovod.runner.util that scripts and tests import."""
