"""Order lookup over the shared demo orders."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

from core.db import Scope, transaction
from core.errors import InvalidInput, NotFound
from core.text import clean_text, describe

_ORDER_ID = re.compile(r"^[A-Za-z0-9-]{1,32}$")


@dataclass(frozen=True)
class Order:
    order_id: str
    customer_name: str
    status: str
    items: list[dict[str, Any]]
    total: Decimal
    currency: str
    carrier: str | None
    tracking_number: str | None
    placed_at: datetime
    estimated_delivery: date | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "order_id": self.order_id,
            "customer_name": self.customer_name,
            "status": self.status,
            "items": self.items,
            "total": f"{self.total:.2f}",
            "currency": self.currency,
            "carrier": self.carrier,
            "tracking_number": self.tracking_number,
            "placed_at": self.placed_at.isoformat(),
            "estimated_delivery": self.estimated_delivery.isoformat() if self.estimated_delivery else None,
        }

    def summary(self, today: date | None = None) -> str:
        """The order in a sentence or three; an order still on its way past its estimated delivery (`today`,
        UTC's by default) is said to be late, not "Estimated delivery" on a day gone by."""
        items = ", ".join(f"{item.get('qty', 1)} x {item.get('name', item.get('sku', 'item'))}" for item in self.items)
        text = f"Order {self.order_id} is {self.status}: {items}; total {self.total:.2f} {self.currency}."
        if self.carrier and self.tracking_number:
            text += f" Shipped with {self.carrier}, tracking {self.tracking_number}."
        if self.estimated_delivery and self.status in ("processing", "shipped"):
            due = f"{self.estimated_delivery:%B %-d, %Y}"
            if self.estimated_delivery < (today or datetime.now(UTC).date()):
                text += f" It was expected by {due}, so it is running late."
            else:
                text += f" Estimated delivery {due}."
        return text


def normalize_order_id(order_id) -> str:
    """'#1001', 'order 1001', ' 1001 ' -> '1001'."""
    if isinstance(order_id, int) and not isinstance(order_id, bool):
        order_id = str(order_id) if abs(order_id) < 10**40 else "x"
    text = clean_text(order_id, what="order number", max_length=64)
    text = re.sub(r"^(order\s*(number|no\.?|#)?\s*)", "", text, flags=re.IGNORECASE).lstrip("#").strip()
    if not _ORDER_ID.match(text):
        raise InvalidInput(f"{describe(order_id)} is not an order number; order numbers look like 1001.")
    return text


def lookup(scope: Scope, order_id) -> Order:
    order_id = normalize_order_id(order_id)
    with transaction(scope) as cur:
        cur.execute(
            "select order_id, customer_name, status, items, total, currency, carrier, tracking_number, "
            "placed_at, estimated_delivery from public.orders where upper(order_id) = upper(%s)",
            (order_id,),
        )
        row = cur.fetchone()
    if row is None:
        raise NotFound(f"Order {order_id} not found.")
    return Order(**row)
