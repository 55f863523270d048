"""Horovod's horovod.runner.common.util, the parts scripts and tests
import."""
