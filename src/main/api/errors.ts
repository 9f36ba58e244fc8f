import { BusyError, NotActiveError } from '../terminal/commands';
import { FloorRefusedError } from '../terminal/floor';
import { InvalidRequestError } from '../terminal/errors';
import { IdTakenError, SessionLimitError } from '../terminal/manager';
import { InputBacklogError, UnsupportedError } from '../terminal/session';
import { SendActiveError } from '../terminal/send';
import { TmuxUnavailableError } from '../terminal/backends/tmux';
import { HostClosedError, NoRunningProcessError, SpawnRefusedError, StdinBacklogError } from '../terminal/pipe-commands/command-host';
import { DeniedError } from '../terminal/line-gate';
import { HostUnavailableError } from '../terminal/host/host-client';

/**
 * Every refusal is an ApiError: a status, a stable code, and a message that says what was wrong.
 * Each door renders it in its own dialect (see `renderError`).
 */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly code: string = defaultCode(status),
    /** Field-level problems, for validation errors. */
    readonly issues?: { loc: (string | number)[]; msg: string; type: string }[],
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** Status for a refusal because a person holds the floor (documented in docs/API.md). */
export const FLOOR_HELD_STATUS = 423;

export type Dialect = 'aio' | 'execd' | 'native';

export function dialectOf(url: string): Dialect {
  if (url.startsWith('/v1/') || url.startsWith('/v2/') || url === '/v1' || url === '/v2') return 'aio';
  if (url === '/pty' || url.startsWith('/pty/') || url.startsWith('/pty?')) return 'execd';
  return 'native';
}

function defaultCode(status: number): string {
  switch (status) {
    case 400:
      return 'INVALID_REQUEST';
    case 401:
      return 'UNAUTHORIZED';
    case 403:
      return 'FORBIDDEN';
    case 404:
      return 'NOT_FOUND';
    case 405:
      return 'METHOD_NOT_ALLOWED';
    case 409:
      return 'CONFLICT';
    case 413:
      return 'PAYLOAD_TOO_LARGE';
    case 415:
      return 'UNSUPPORTED_MEDIA_TYPE';
    case 422:
      return 'VALIDATION_ERROR';
    case 423:
      return 'FLOOR_HELD';
    case 429:
      return 'RATE_LIMITED';
    case 431:
      return 'HEADERS_TOO_LARGE';
    case 503:
      return 'UNAVAILABLE';
    default:
      return status >= 500 ? 'RUNTIME_ERROR' : 'ERROR';
  }
}

/** Maps the core's refusals (and the HTTP framework's) onto statuses; anything else is a 500. */
export function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  if (err instanceof FloorRefusedError) return new ApiError(FLOOR_HELD_STATUS, err.message, 'FLOOR_HELD');
  // A person (or the approval policy) refused the command: it never ran.
  if (err instanceof DeniedError) return new ApiError(403, err.message, 'DENIED');
  if (err instanceof BusyError) return new ApiError(400, err.message, 'SESSION_BUSY');
  if (err instanceof NotActiveError) return new ApiError(400, err.message, 'SESSION_NOT_ACTIVE');
  if (err instanceof SessionLimitError) return new ApiError(400, err.message, 'SESSION_LIMIT');
  if (err instanceof IdTakenError) return new ApiError(400, err.message, 'ID_UNAVAILABLE');
  if (err instanceof InvalidRequestError) return new ApiError(400, err.message, 'INVALID_REQUEST');
  if (err instanceof InputBacklogError) return new ApiError(429, err.message, 'INPUT_BACKLOG');
  if (err instanceof UnsupportedError) return new ApiError(400, err.message, 'NOT_SUPPORTED');
  if (err instanceof TmuxUnavailableError || err instanceof HostUnavailableError) return new ApiError(503, err.message, 'UNAVAILABLE');
  if (err instanceof SendActiveError) return new ApiError(409, err.message, 'SEND_ACTIVE');
  if (err instanceof NoRunningProcessError) return new ApiError(400, err.message, 'NO_RUNNING_PROCESS');
  if (err instanceof StdinBacklogError) return new ApiError(400, err.message, 'STDIN_BACKLOG');
  if (err instanceof HostClosedError) return new ApiError(400, err.message, 'SESSION_NOT_ACTIVE');
  if (err instanceof SpawnRefusedError) return new ApiError(400, err.message, 'SPAWN_REFUSED');
  const e = err as { code?: string; statusCode?: number; message?: string };
  switch (e?.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ApiError(413, 'Request body is too large', 'PAYLOAD_TOO_LARGE');
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new ApiError(400, `Request body is not valid JSON: ${e.message ?? ''}`.trim(), 'INVALID_REQUEST_BODY');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ApiError(415, 'Unsupported content type; send application/json', 'UNSUPPORTED_MEDIA_TYPE');
    case 'FST_ERR_BAD_URL':
    case 'FST_ERR_ASYNC_CONSTRAINT':
      return new ApiError(400, 'Malformed URL: a path segment is not valid percent-encoding', 'INVALID_REQUEST');
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return new ApiError(414, 'A path parameter is longer than 256 characters (session ids are at most 128)', 'URI_TOO_LONG');
  }
  if (e?.statusCode && e.statusCode >= 400 && e.statusCode < 500) return new ApiError(e.statusCode, e.message ?? 'Bad request');
  return new ApiError(500, 'Internal error; the server logged the details', 'RUNTIME_ERROR');
}

/** The body each door answers an error with. */
export function renderError(dialect: Dialect, err: ApiError): unknown {
  switch (dialect) {
    case 'aio':
      // AIO's envelope; validation errors also carry FastAPI's `detail` list so its SDKs can read them.
      return { success: false, message: err.message, data: null, ...(err.issues ? { detail: err.issues } : {}) };
    case 'execd':
      return { code: execdCode(err), message: err.message };
    case 'native':
      return { error: { code: err.code, message: err.message, ...(err.issues ? { issues: err.issues } : {}) } };
  }
}

function execdCode(err: ApiError): string {
  if (err.status === 404) return 'CONTEXT_NOT_FOUND';
  if (err.code === 'VALIDATION_ERROR' || err.code === 'INVALID_REQUEST_BODY') return 'INVALID_REQUEST_BODY';
  if (err.status === 401) return 'UNAUTHORIZED';
  if (err.status >= 500) return 'RUNTIME_ERROR';
  return err.code;
}
