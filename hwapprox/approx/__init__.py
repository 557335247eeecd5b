"""Bit-accurate integer models of softmax, GELU and LayerNorm approximations.

Each method is a frozen, validated spec whose ``model(raw)`` (pure integer
numpy) is the single definition that the HLS and RTL implementations must
reproduce bit for bit; ``tables()`` gives every look-up table as exact
integers and ``reference(x)`` the float64 function approximated.
"""
