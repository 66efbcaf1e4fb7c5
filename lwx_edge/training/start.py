"""Where a run's encoder starts from a bundle (``init_from``): its architecture checked against the config, its
token table moved to another vocabulary or stored in another form when the config asks."""
from __future__ import annotations

import numpy as np
import torch

from ..errors import LwxError
from ..tokenizer import Tokenizer
from .config import TrainConfig, table_form


def check_architecture(cfg: TrainConfig, config) -> None:
    """Refuse a start bundle whose architecture differs from the config's (vocabulary and table form aside)."""
    mine = {k: v for k, v in cfg.model.to_dict().items() if k not in ("vocab_size", "dropout", "table_bits", "table_rank")}
    other = {k: v for k, v in config.to_dict().items() if k in mine}
    if mine != other:
        diff = {k: (mine[k], other[k]) for k in mine if mine[k] != other[k]}
        raise LwxError(f"init_from {cfg.init_from}: its architecture differs from the config's "
                       f"(config vs bundle: {diff})")


def transferred(cfg: TrainConfig, state, config, theirs: Tokenizer, teacher, say) -> dict[str, np.ndarray]:
    """init_from with another tokenizer (``--tokenizer``): the token table moves to the new vocabulary
    (:func:`lwx_edge.training.transfer.transfer_vocabulary`; with a ``teacher``, new pieces start from the
    teacher's vectors of them), every other weight is kept."""
    from .transfer import full_table, transfer_vocabulary

    check_architecture(cfg, config)
    mine = Tokenizer(cfg.tokenizer)
    vectors = None
    if teacher is not None:
        from ..data.teacher import token_vectors

        vectors = token_vectors(mine, teacher)
    table, copied = transfer_vocabulary(full_table(state), theirs, mine, vectors)
    state = {k: v for k, v in state.items() if not k.startswith("tok_proj.")}
    state["tok.weight"] = table
    how = "the teacher's vectors of them, mapped" if vectors is not None else "the mean of their old pieces"
    say(f"vocabulary transfer from {cfg.init_from}: {copied:,} of {mine.vocab_size:,} pieces "
        f"kept their row, the rest start from {how}")
    return state


def load_start(model, start: dict[str, np.ndarray], cfg: TrainConfig, tokenizer: Tokenizer, data, say) -> None:
    """The encoder from ``init_from``'s weights; a table of another form than the config's ``table_rank`` is
    re-stored (rows weighted by their pieces' counts in the training pairs)."""
    theirs = start["tok.weight"].shape[1] if "tok_proj.weight" in start else 0
    weights = None
    if theirs != cfg.model.table_rank and cfg.model.table_rank:  # re-stored: rows weigh by their counts
        from .transfer import piece_weights

        counts = np.bincount(np.concatenate(data.src + data.tgt).astype(np.int64),
                             minlength=tokenizer.vocab_size)
        weights = torch.from_numpy(piece_weights(tokenizer, counts))
    kept = model.encoder.load_weights(start, weights)
    say(f"encoder initialised from {cfg.init_from}" + (
        "" if theirs == cfg.model.table_rank else
        f" (its token table of {table_form(theirs)} stored at {table_form(cfg.model.table_rank)}, as the "
        f"config's model.table_rank says: {100 * kept:.1f}% of its weighted energy kept)"))
