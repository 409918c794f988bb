"""strategies.by_name: the one name → strategy map of the command line and the estimators."""

from __future__ import annotations

import pytest

from qpcore.core.problem import ProblemError
from qpcore.core.solve import Strategy
from qpcore_strategies import (ASVM, Auto, BMRM, GPCG, INCAS, KERNEL_STRATEGIES, LINEAR_STRATEGIES, OCAS, SMO, ActiveSetOCAS,
                        Decomposition, DenseActiveSet, InteriorPoint, by_name)

EXPECTED = {"auto": Auto, "smo": SMO, "decomposition": Decomposition, "incas": INCAS, "gpcg": GPCG, "active-set": DenseActiveSet,
            "interior-point": InteriorPoint, "asvm": ASVM, "ocas": OCAS, "ocas-active": ActiveSetOCAS, "bmrm": BMRM}


@pytest.mark.parametrize("name", KERNEL_STRATEGIES + LINEAR_STRATEGIES)
def test_every_name_builds_its_strategy(name: str) -> None:
    s = by_name(name)
    assert type(s) is EXPECTED[name] and isinstance(s, Strategy)
    assert by_name(name) == s                     # default settings, every time


def test_names_are_complete_and_unknown_is_refused() -> None:
    assert set(KERNEL_STRATEGIES + LINEAR_STRATEGIES) == set(EXPECTED)
    with pytest.raises(ProblemError, match="unknown name 'simplex'"):
        by_name("simplex")
