"""Elastic jobs, as Horovod's horovod.runner.elastic names its parts."""
