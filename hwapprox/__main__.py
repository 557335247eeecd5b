"""``python -m hwapprox`` runs the command line."""

from hwapprox.cli import main

main()
