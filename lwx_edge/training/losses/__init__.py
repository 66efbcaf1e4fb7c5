"""Training losses (docs/METHOD.md §3). Each is a pure function computed in fp32.

- :func:`generative_targets`, :func:`generative_loss` — UGT / XTR / SMLM, [P] Eqs. 1–4.
- :func:`alignment_loss` — bidirectional in-batch alignment, [P] Eq. 5.
- :func:`similarity_loss`, :func:`similarity_max_delta` — similarity agreement, [P] Eq. 6.
- :func:`distance_constraint_loss` — cT-LASER, [T] Eqs. 7–10.
- :func:`ranking_loss` — one-directional translation ranking, [C] §2.
- :func:`teacher_targets`, :func:`distillation_loss`, :func:`mono_distillation_loss`,
  :func:`relational_loss` — knowledge distillation, docs/METHOD.md §3.6.
- :data:`LOSSES` — the registry of the objective's terms (weight key, inputs, batch-level or not).
"""
from .alignment import alignment_loss
from .distance import distance_constraint_loss
from .distill import distillation_loss, mono_distillation_loss, output_targets, relational_loss, teacher_targets
from .generative import generative_loss, generative_targets
from .ranking import ranking_loss
from .registry import LOSSES, Loss
from .similarity import similarity_loss, similarity_max_delta

__all__ = [
    "LOSSES",
    "Loss",
    "alignment_loss",
    "distance_constraint_loss",
    "distillation_loss",
    "generative_loss",
    "generative_targets",
    "mono_distillation_loss",
    "output_targets",
    "ranking_loss",
    "relational_loss",
    "similarity_loss",
    "similarity_max_delta",
    "teacher_targets",
]
