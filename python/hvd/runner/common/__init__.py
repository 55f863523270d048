"""Horovod's horovod.runner.common, the parts scripts and tests import."""
