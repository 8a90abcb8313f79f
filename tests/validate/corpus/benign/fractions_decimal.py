from decimal import Decimal, ROUND_HALF_UP
from fractions import Fraction

prices = [Decimal("19.99"), Decimal("5.01"), Decimal("0.10")]
total = sum(prices)
print(total, total.quantize(Decimal("0.1"), rounding=ROUND_HALF_UP))
print(Fraction(3, 4) + Fraction(1, 6))
