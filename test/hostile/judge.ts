import { METHODS } from 'node:http';
import type { HttpCase } from './http-gen';
import { dialectOf, errorMessage, kindOf, namesField, specificProblem, STATE_MESSAGE, type Tally } from './oracle';
import type { HttpRes, RawHttpRes, UpgradeOutcome } from './transport';
import { normalizedPath, type FrameCase, type Protocol, type UpgradeCase } from './ws-gen';

/**
 * The rules every answer is held to, applied one outcome at a time. A broken rule is recorded in the
 * tally as a violation with the seed, the case and the exact request, so it can be reproduced.
 */

const brief = (text: string, n = 300): string => JSON.stringify(text.length > n ? `${text.slice(0, n)}…` : text);

export function judgeHttp(c: HttpCase, res: HttpRes, tally: Tally, where: string): void {
  tally.try('http');
  if (res.status === -1) {
    tally.other('http', 'hang');
    tally.violate('hang', where, res.error ?? 'no answer');
    return;
  }
  if (res.status === 0) {
    tally.other('http', 'no answer (connection dropped)');
    tally.violate('no-answer', where, res.error ?? 'transport error');
    return;
  }
  const st = res.status;
  const json = res.json as Record<string, any> | undefined;
  const head = c.req.method === 'HEAD';
  const got = `got ${st} ${brief(res.text)}`;
  if (st >= 500) {
    tally.other('http', String(st));
    tally.violate('server-error', where, got);
    return;
  }
  if (!METHODS.includes(c.req.method)) {
    // The HTTP parser cannot read the request line, so there is no route, dialect, Host or credential
    // yet: the server's parser-level answer (ptydeck's own shape) is the only one possible.
    const m = errorMessage('native', json);
    tally.reject('http', String(st), kindOf(st, 'message' in m ? m.message : ''));
    if (st !== 400) tally.violate('raw-unexpected-status', where, `an unparseable method must be 400: ${got}`);
    if ('problem' in m) tally.violate('message', where, `${st}: ${m.problem}`);
    else if (specificProblem(m.message)) tally.violate('message', where, `${st}: ${specificProblem(m.message)}`);
    return;
  }
  if (c.expect.foreign) tally.check('foreign Host/Origin -> 403');
  else if (c.expect.credential !== 'valid' && !c.expect.publicRoute) tally.check('no valid credential -> 401');
  if (c.expect.foreignSession) tally.check("another's session never served");
  if (c.expect.personOnly) tally.check('person-only route never serves an agent');
  if (c.expect.foreign) {
    if (st !== 403) tally.violate('foreign-not-403', where, `a foreign ${c.expect.foreign} must get 403: ${got}`);
    else if (!head) {
      const m = errorMessage(c.dialect, json);
      if (!('message' in m) || !new RegExp(`^${c.expect.foreign === 'host' ? 'Host' : 'Origin'} `).test(m.message)) tally.violate('foreign-not-403', where, `403 without saying the ${c.expect.foreign} was refused: ${got}`);
    }
  } else if (c.expect.credential !== 'valid' && !c.expect.publicRoute) {
    if (st < 400) tally.violate('auth-bypass', where, `no valid credential, yet ${got}`);
    else if (st !== 401) tally.violate('credential-not-checked-first', where, `no valid credential must be 401 first: ${got}`);
  }

  if (st < 400) {
    tally.accept('http', String(st));
    if (!c.expect.foreign && !c.expect.uncertain && (c.expect.invalid.length || c.expect.broken)) {
      tally.violate('accepted-invalid', where, `invalid ${c.expect.broken ? `body (${c.expect.broken})` : c.expect.invalid.join(', ')} accepted: ${got}`);
    }
    if (c.expect.foreignSession && !(json && json.success === false)) tally.violate('ownership', where, `another principal's session answered: ${got}`);
    if (c.expect.personOnly) tally.violate('person-only', where, `an agent was served a route only the person may use: ${got}`);
    if (/root:x:0:0:/.test(res.text)) tally.violate('traversal-leak', where, 'the response holds /etc/passwd');
    if (json && json.success === false) {
      // AIO answers some refusals with 200 and success:false (a DELETE of a missing session).
      const p = specificProblem(json.message);
      if (p) tally.violate('message', where, `200 success:false: ${p}`);
    }
    return;
  }

  // A refusal: what does it say?
  const extracted = head ? null : errorMessage(c.dialect, json);
  const message = extracted && 'message' in extracted ? extracted.message : '';
  tally.reject('http', String(st), kindOf(st, message));
  if (extracted) tally.check('4xx message, dialect and specificity');
  if (extracted && 'problem' in extracted) tally.violate('message', where, `${st} in the wrong shape for ${c.dialect}: ${extracted.problem}`);
  else if (extracted) {
    const p = specificProblem(message);
    if (p) tally.violate('message', where, `${st}: ${p}`);
  }
  if (!message || c.expect.foreign || c.expect.credential !== 'valid') return;
  if (![400, 413, 422].includes(st) || STATE_MESSAGE.test(message) || /^(Too many sessions|Session id )/.test(message)) return;
  if (c.expect.broken === 'json') {
    if (!/JSON/i.test(message)) tally.violate('field-not-named', where, `invalid JSON, but the message does not say so: ${brief(message)}`);
  } else if (c.expect.broken === 'object') {
    if (!/body|object/i.test(message)) tally.violate('field-not-named', where, `a body that is not an object, but the message does not say so: ${brief(message)}`);
  } else if (c.expect.broken === 'size') {
    if (!/too large|limit|bytes/i.test(message)) tally.violate('field-not-named', where, `a body over the limit, but the message does not say so: ${brief(message)}`);
  } else if (c.expect.invalid.length && !c.expect.uncertain) {
    tally.check('wrong field named in the message');
    if (!c.expect.invalid.some((f) => namesField(message, f))) tally.violate('field-not-named', where, `field ${c.expect.invalid.join(' or ')} was wrong, but the message does not name it: ${brief(message)}`);
  }
}

// ---------------------------------------------------------------- WebSocket frames

export function isSentinelReply(proto: Protocol, token: string) {
  return (f: { json?: any }): boolean => {
    const m = f.json;
    if (!m || typeof m !== 'object') return false;
    if (proto === 'aio') return m.type === 'pong' && m.timestamp === token;
    if (proto === 'execd') return m.type === 'error' && typeof m.error === 'string' && m.error.includes(token);
    return m.type === 'error' && typeof m.message === 'string' && m.message.includes(token);
  };
}

export function sentinelFrame(proto: Protocol, token: string): string {
  return proto === 'aio' ? JSON.stringify({ type: 'ping', timestamp: token }) : JSON.stringify({ type: token });
}

/** The message of an error frame, by protocol, or why it has none. */
export function wsErrorMessage(proto: Protocol, m: any): { message: string } | { problem: string } {
  if (proto === 'aio') return typeof m.data === 'string' ? { message: m.data } : { problem: `AIO error frame without a string "data": ${JSON.stringify(m).slice(0, 200)}` };
  if (proto === 'execd') {
    if (typeof m.error !== 'string' || typeof m.code !== 'string' || !m.code) return { problem: `execd error frame without "error" and "code": ${JSON.stringify(m).slice(0, 200)}` };
    return { message: m.error };
  }
  return typeof m.message === 'string' ? { message: m.message } : { problem: `viewer error frame without "message": ${JSON.stringify(m).slice(0, 200)}` };
}

/** Judges the frames a socket received between a hostile frame and the sentinel's answer. */
export function judgeFrameReplies(proto: Protocol, c: FrameCase, between: { json?: any }[], tally: Tally, where: string): void {
  const errors = between.filter((f) => f.json && typeof f.json === 'object' && f.json.type === 'error').map((f) => f.json);
  if (c.expect === 'error') tally.check('wrong-shaped frame -> error frame');
  for (const e of errors) {
    tally.check('error frame carries a message');
    const m = wsErrorMessage(proto, e);
    if ('problem' in m) tally.violate('ws-error-message', where, m.problem);
    else {
      const p = specificProblem(m.message);
      if (p) tally.violate('ws-error-message', where, p);
    }
  }
  if (c.expect === 'error') {
    if (errors.length === 0) {
      tally.accept('wsFrame', 'no reply');
      tally.violate('ws-wrong-shape-not-rejected', where, `a wrong-shaped frame got no error frame (${c.note}); frames in between: ${JSON.stringify(between.map((f) => f.json ?? '<binary>')).slice(0, 300)}`);
    } else {
      tally.reject('wsFrame', 'error frame', 'ws frame refused');
      if (errors.length > 1) tally.note(`${where}: ${errors.length} error frames for one frame`);
    }
    return;
  }
  if (c.expect === 'pong') {
    const pong = between.find((f) => f.json && typeof f.json === 'object' && f.json.type === 'pong');
    if (!pong) tally.violate('ws-no-pong', where, `ping got no pong (${c.note})`);
    else if (proto === 'aio' && JSON.stringify(pong.json.timestamp) !== JSON.stringify(c.timestamp)) tally.note(`${where}: pong timestamp ${JSON.stringify(pong.json.timestamp)?.slice(0, 60)} for ${JSON.stringify(c.timestamp)?.slice(0, 60)}`);
    tally.accept('wsFrame', 'pong');
    return;
  }
  // silent
  if (errors.length) {
    tally.reject('wsFrame', 'error frame', 'ws frame refused');
    tally.note(`${where}: expected no reply to ${c.note}, got ${JSON.stringify(errors[0]).slice(0, 160)}`);
  } else tally.accept('wsFrame', 'no reply');
}

// ---------------------------------------------------------------- upgrades

export function judgeUpgrade(c: UpgradeCase, out: UpgradeOutcome, tally: Tally, where: string): void {
  tally.try('wsUpgrade');
  const res = out.response;
  if (!res) {
    tally.other('wsUpgrade', out.closedByServer ? 'dropped without an answer' : 'hang');
    tally.violate(out.closedByServer ? 'no-answer' : 'hang', where, `no HTTP answer to the upgrade (${out.error ?? 'closed'}${out.closedByServer ? '' : ' within the deadline'})`);
    return;
  }
  const st = res.status;
  const got = `got ${st} ${brief(res.text)}`;
  if (st >= 500) {
    tally.other('wsUpgrade', String(st));
    tally.violate('server-error', where, got);
    return;
  }
  if (c.expect.foreign) tally.check('foreign Host/Origin -> 403');
  if (c.expect.foreign && st !== 403) tally.violate('foreign-not-403', where, `a foreign ${c.expect.foreign} must get 403: ${got}`);
  else if (!c.expect.foreign && c.expect.known && c.expect.credential !== 'valid') {
    if (st === 101) tally.violate('auth-bypass', where, 'upgraded without a valid credential');
    else if (st !== 401) tally.violate('credential-not-checked-first', where, `no valid credential must be 401 first: ${got}`);
  }
  // The server picks the route and the dialect on the normalized path.
  const pathname = normalizedPath(c.path);
  if (st === 101) {
    const json = out.frames.filter((f) => f.opcode === 0x1).map((f) => {
      try {
        return JSON.parse(f.payload.toString('utf8'));
      } catch {
        return null;
      }
    });
    const closeFrame = out.frames.find((f) => f.opcode === 0x8);
    const code = closeFrame ? (closeFrame.payload.length >= 2 ? closeFrame.payload.readUInt16BE(0) : 1005) : null;
    if (code !== null) tally.close(code);
    if (code === 1011) tally.violate('server-error', where, 'closed with 1011');
    const error = json.find((m) => m && m.type === 'error');
    if (error) {
      const proto: Protocol = pathname.startsWith('/pty/') ? 'execd' : pathname.startsWith('/api/') ? 'viewer' : 'aio';
      const m = wsErrorMessage(proto, error);
      if ('problem' in m) tally.violate('ws-error-message', where, m.problem);
      else if (specificProblem(m.message)) tally.violate('ws-error-message', where, specificProblem(m.message)!);
    }
    const attached = json.some((m) => m && ['ready', 'connected', 'snapshot', 'resume'].includes(m.type));
    if (c.expect.foreignSession && attached) tally.violate('ownership', where, `attached to another principal's session: ${JSON.stringify(json).slice(0, 200)}`);
    if (error) tally.reject('wsUpgrade', `101 then error${code ? ` + close ${code}` : ''}`, code === 4404 ? 'not found' : code === 4409 ? 'conflict' : 'ws refused');
    else tally.accept('wsUpgrade', '101');
    return;
  }
  if (st < 400) {
    tally.accept('wsUpgrade', String(st));
    return;
  }
  const dialect = dialectOf(pathname);
  const extracted = errorMessage(dialect, res.json);
  const message = 'message' in extracted ? extracted.message : res.text;
  tally.reject('wsUpgrade', String(st), kindOf(st, message));
  const contentType = res.headers['content-type'] ?? '';
  if ('problem' in extracted) {
    tally.violate('message', where, `${st} upgrade refusal in the wrong shape for ${dialect} (content-type ${contentType}${c.expect.badHandshake ? ', a broken handshake' : ''}): ${extracted.problem}`);
  } else if (specificProblem(message)) tally.violate('message', where, `${st}: ${specificProblem(message)}`);
}

// ---------------------------------------------------------------- raw sockets

/** Judges an HTTP answer read off a raw socket; `dialect` is the one its route speaks (native for parser errors). */
export function judgeRawResponse(res: RawHttpRes, dialect: 'aio' | 'execd' | 'native', tally: Tally, where: string, opts: { mustBe?: number[]; tag?: string } = {}): void {
  const st = res.status;
  const got = `got ${st} ${brief(res.text)}`;
  if (st >= 500) {
    tally.other('raw', String(st));
    tally.violate('server-error', where, got);
    return;
  }
  if (opts.mustBe && !opts.mustBe.includes(st)) tally.violate(opts.mustBe.includes(403) ? 'foreign-not-403' : 'raw-unexpected-status', where, `expected ${opts.mustBe.join(' or ')}: ${got}`);
  if (st < 400) {
    tally.accept('raw', String(st));
    return;
  }
  const extracted = errorMessage(dialect, res.json);
  const message = 'message' in extracted ? extracted.message : '';
  tally.reject('raw', String(st), kindOf(st, message));
  if ('problem' in extracted) tally.violate('message', where, `${st} in the wrong shape${opts.tag ? ` ${opts.tag}` : ''}: ${extracted.problem}`);
  else if (specificProblem(message)) tally.violate('message', where, `${st}: ${specificProblem(message)}`);
}
