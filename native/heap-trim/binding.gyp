{
  "targets": [
    {
      "target_name": "heap_trim",
      "sources": ["heap_trim.c"],
      "cflags": ["-Wall", "-Wextra", "-O2"]
    }
  ]
}
