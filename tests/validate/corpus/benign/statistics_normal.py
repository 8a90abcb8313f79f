from statistics import NormalDist

heights = NormalDist(mu=170, sigma=8)
print("P(h < 160) =", round(heights.cdf(160), 4))
print("90th percentile =", round(heights.inv_cdf(0.9), 1))
overlap = heights.overlap(NormalDist(mu=165, sigma=7))
print("overlap", round(overlap, 3))
