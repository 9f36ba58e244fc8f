{
  "targets": [
    {
      "target_name": "tty_modes",
      "sources": ["tty_modes.c"],
      "cflags": ["-Wall", "-Wextra", "-O2"]
    }
  ]
}
