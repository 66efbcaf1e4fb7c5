"""``python -m lwx_edge``: the ``lwx-edge`` command line."""
from .cli import main

main()
