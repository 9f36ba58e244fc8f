'use strict';
// The compiled helper, or null where it could not be built (not Linux/macOS, no compiler): callers fall
// back to `stty` then. Loading never throws.
let native = null;
try {
  native = require('./build/Release/tty_modes.node');
} catch {
  native = null;
}
module.exports = { lineModes: native ? native.lineModes : null };
