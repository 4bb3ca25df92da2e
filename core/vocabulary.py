"""The words one user and this deployment use, for biasing speech recognition toward them.

Speech models mishear rare words (names, places, product names, order ids) as common ones
("Siobhan" -> "Shavon"). A recognizer that is told which words to expect gets them right far more
often; this module only gathers them: the deployment's product names and order ids, then the
user's remembered values and name, least important first (a prompt with a length limit keeps the
last ones).
"""

from __future__ import annotations

import re

from core.db import Scope, transaction

MAX_ORDER_IDS = 40
MAX_PRODUCTS = 40
MAX_USER_TERMS = 40
_PRODUCT_NAME = re.compile(r"^(.*?)(?:\s+\(.*\))?$")


def deployment_terms(scope: Scope) -> list[str]:
    """Product names from the orders' items ("Kestrel Grinder"), then order ids. The variant after the
    dash ("Chalk White") is left out: colors are common words Whisper spells right, and title-cased ones
    in the prompt made it write "My favorite color is Sage Green"."""
    with transaction(scope) as cur:
        cur.execute(
            "select distinct item->>'name' as name from public.orders, jsonb_array_elements(items) as item "
            "where item->>'name' is not null order by 1 limit %s",
            (MAX_PRODUCTS,),
        )
        products: list[str] = []
        for row in cur.fetchall():
            name = _PRODUCT_NAME.match(str(row["name"]).split(" - ")[0].strip()).group(1).strip()
            if name and name not in products:
                products.append(name)
        cur.execute("select order_id from public.orders order by order_id limit %s", (MAX_ORDER_IDS,))
        order_ids = [str(row["order_id"]) for row in cur.fetchall()]
    return products + order_ids


def user_terms(scope: Scope) -> list[str]:
    """The user's remembered values (most recently updated last) and their name last."""
    with transaction(scope) as cur:
        cur.execute(
            "select content from public.memories where user_id = %s order by updated_at desc limit %s",
            (scope.user_id, MAX_USER_TERMS),
        )
        values = [str(row["content"]).strip() for row in cur.fetchall()][::-1]
        cur.execute("select name from public.profiles where id = %s", (scope.user_id,))
        row = cur.fetchone()
    name = (row or {}).get("name")
    return [v for v in values if v] + ([name.strip()] if name and name.strip() else [])


def speech_terms(scope: Scope) -> list[str]:
    """Everything to bias recognition toward, least important first."""
    return deployment_terms(scope) + user_terms(scope)
