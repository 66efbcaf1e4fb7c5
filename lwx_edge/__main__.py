"""``python -m lwx_edge``: the ``lwx-edge`` command line."""
from .cli import main

if __name__ == "__main__":  # not when a spawned worker (teacher_workers) imports it as __mp_main__
    main()
