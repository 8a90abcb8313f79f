import math

points = [(0, 0), (4, 0), (4, 3), (0, 3)]
perimeter = sum(math.dist(points[i], points[(i + 1) % len(points)]) for i in range(len(points)))
area = 0.5 * abs(sum(x1 * y2 - x2 * y1 for (x1, y1), (x2, y2) in zip(points, points[1:] + points[:1])))
print(f"perimeter {perimeter}, area {area}, diagonal {math.hypot(4, 3)}")
