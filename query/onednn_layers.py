"""The model's Linear layers on oneDNN's kernels, where they give the same vectors."""

from __future__ import annotations

import copy
import logging
from typing import Any

import numpy as np

from recallfs.query.encoder_probes import AGREE, PROBES

log = logging.getLogger("recallfs.embedder")



def onednn_linears(model: Any) -> Any:
    """A copy of `model` whose Linear layers run through oneDNN instead of MKL's sgemm, when it gives
    the same vectors on a probe (else the model as loaded).

    The same fp32 math (vectors agree to about 2e-7), but on an AMD EPYC MKL takes a slower path than
    oneDNN's AVX-512 kernels (bulk embedding 1.6-1.7x the rows/s), and on an Intel Xeon with AMX the
    reverse (0.75-0.85x): query/bulk_encoder.py times both and keeps the faster."""
    import torch
    from torch.utils.mkldnn import MkldnnLinear

    if not torch.backends.mkldnn.is_available():  # type: ignore[no-untyped-call]
        return model

    def convert(module: torch.nn.Module) -> None:
        for name, child in module.named_children():
            if type(child) is torch.nn.Linear and child.weight.dtype == torch.float32:
                setattr(module, name, MkldnnLinear(child, torch.float))
            else:
                convert(child)

    try:
        converted = copy.deepcopy(model)
        convert(converted)
        kw: dict[str, Any] = {"batch_size": 8, "normalize_embeddings": True, "convert_to_numpy": True,
                              "show_progress_bar": False}  # no bar in the daemon's log
        probes = list(PROBES[:2])  # the long one adds nothing here: the same kernels, longer
        agree = float(np.min(np.sum(np.asarray(model.encode(probes, **kw)) *
                                    np.asarray(converted.encode(probes, **kw)), axis=1)))
    except Exception as exc:  # an unusual model: keep the stock layers
        log.info("oneDNN linear layers not used: %s: %s", type(exc).__name__, exc)
        return model
    if agree < AGREE:
        log.info("oneDNN linear layers not used: the probe vectors differ (cosine %.6f)", agree)
        return model
    return converted
