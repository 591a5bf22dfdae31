# A log as an access log exported to CSV: 300 operations of a client with full jitter
# (base 100 ms, cap 2 s, 4 attempts) against an API answering 503; each answer takes 1-5 ms.
import random
random.seed(42)
print("ts,request_id,code,latency_ms")
for op in range(300):
    t = op * 30.0
    for k in range(1, 5):
        took = 0.001 + 0.004 * random.random()
        print(f"{t:.6f},req-{op},503,{took * 1e3:.3f}")
        t += took + random.uniform(0, min(2.0, 0.1 * 2 ** (k - 1)))
