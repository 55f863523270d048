"""hvd: Horovod's launcher and collectives, rebuilt on libhvd.

Frameworks live in submodules (``hvd.torch``); ``import horovod.torch``
finds the same modules (see ``horovod/__init__.py``).
"""

__version__ = "0.28.1"
