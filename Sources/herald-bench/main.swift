print("herald-bench")
