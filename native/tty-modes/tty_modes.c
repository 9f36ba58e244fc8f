/*
 * lineModes(path): the line discipline's ECHO and ICANON flags of the terminal at `path` (a pty slave,
 * e.g. /dev/pts/3), as one tcgetattr. Node has no ioctl, node-pty exposes no tcgetattr, and running
 * `stty -F` costs a process (about 18 ms) per keystroke; this costs one open, ioctl and close (about 9 µs).
 *
 * Returns a number: bit 0 set when ECHO is on, bit 1 set when ICANON is on; a negative errno when the
 * terminal cannot be read (it is gone, or not a terminal). The terminal is opened O_NOCTTY, so it never
 * becomes the caller's controlling terminal, and O_NONBLOCK, so a hung-up line cannot block the open.
 */
#include <node_api.h>
#include <errno.h>
#include <fcntl.h>
#include <termios.h>
#include <unistd.h>

#define MODE_ECHO 1
#define MODE_CANONICAL 2
#define MAX_PATH_BYTES 256

static napi_value LineModes(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  napi_value result;
  char path[MAX_PATH_BYTES];
  size_t len = 0;
  napi_valuetype type;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 1 || napi_typeof(env, argv[0], &type) != napi_ok ||
      type != napi_string || napi_get_value_string_utf8(env, argv[0], path, sizeof path, &len) != napi_ok || len == 0 ||
      len >= sizeof path - 1) {
    napi_throw_type_error(env, NULL, "lineModes needs a terminal path of 1 to 254 bytes");
    return NULL;
  }
  int value;
  int fd = open(path, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    value = -errno;
  } else {
    struct termios t;
    if (tcgetattr(fd, &t) == 0) {
      value = ((t.c_lflag & ECHO) ? MODE_ECHO : 0) | ((t.c_lflag & ICANON) ? MODE_CANONICAL : 0);
    } else {
      value = -errno;
    }
    close(fd);
  }
  napi_create_int32(env, value, &result);
  return result;
}

NAPI_MODULE_INIT() {
  napi_value fn;
  if (napi_create_function(env, "lineModes", NAPI_AUTO_LENGTH, LineModes, NULL, &fn) != napi_ok) return NULL;
  if (napi_set_named_property(env, exports, "lineModes", fn) != napi_ok) return NULL;
  return exports;
}
