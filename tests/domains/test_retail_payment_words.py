"""The compact codec names a payment method in the words retail's customer and oracle use for it (retail's
`name_payment`), for every payment method of every customer: what the customer says is what the result shows."""

from __future__ import annotations

import json

import pytest

from pipeline.domains.retail.phrases import name_payment
from pipeline.formats.codec import compact_tool_result
from pipeline.world.registry import load_world


@pytest.mark.parametrize("ref", ["gen-7", "gen-101"])
def test_the_codec_names_payment_methods_as_retail_says_them(ref):
    world = load_world(ref, "retail")
    checked = set()
    for user in world.db.users.values():
        methods = {k: m.model_dump(mode="json") for k, m in user.payment_methods.items()}
        lines = compact_tool_result(json.dumps({"payment_methods": methods})).splitlines()[1:]
        want = [name_payment(m, user.payment_methods) for m in user.payment_methods.values()]
        assert [line.split(" | ")[0] for line in lines] == want
        checked |= {m["source"] for m in methods.values()}
    assert checked == {"credit_card", "gift_card", "paypal"}  # every retail source met at least once
