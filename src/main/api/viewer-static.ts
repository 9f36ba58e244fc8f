import { existsSync, readFileSync, statSync } from 'node:fs';
import { extname, join, normalize, resolve, sep } from 'node:path';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { ApiError } from './errors';
import { authenticate, cookieValue, viewerCookieName } from './guards';
import { requireAdmin } from './native';
import { ViewerLoginConstants } from './viewer-login';
import type { ApiContext, Door } from './server';
import { bodyObject, parse } from './validate';

/**
 * The viewer as a web page: the built renderer at `/` and at `/terminal?session_id=` (AIO's WebShell
 * link). The page itself carries no secret. It signs in (viewer-login.ts) by posting the one-time code of
 * a login link (`/?login=CODE`, which it drops from the address bar first) or the admin token typed into
 * its form to `POST /api/login`, and gets a viewer session: an HttpOnly cookie plus a key it keeps.
 *
 *   GET  /api/login                    public: whether this page is signed in (always 200)
 *   POST /api/login {code} | {token}   public; 200 {ok, key} and the cookie, 401 otherwise
 *   POST /api/logout {all?}            ends this viewer session (or, with all, every one)
 *   POST /api/login-links              the admin mints a one-time link (what `ptydeck url` prints)
 */
const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.json': 'application/json',
  '.map': 'application/json',
};

export function findViewerDir(explicit: string | null): string | null {
  const here = typeof __dirname === 'string' ? __dirname : process.cwd();
  const candidates = [explicit, join(here, '../renderer'), join(here, '../../out/renderer'), join(here, '../../../out/renderer'), join(process.cwd(), 'out/renderer')];
  for (const c of candidates) if (c && existsSync(join(c, 'index.html'))) return resolve(c);
  return null;
}

const LoginBody = z
  .object({ code: z.string().min(1).max(512).optional(), token: z.string().min(1).max(512).optional() })
  .refine((b) => (b.code === undefined) !== (b.token === undefined), 'send either code (from a login link) or token (the admin token)');
const LogoutBody = z.object({ all: z.boolean().optional() });
/** A login body holds one short secret: anyone may send one, so none may be large. */
const LoginBodyBytes = 4096;

/**
 * A session cookie (no Max-Age): it ends with the browser, and the server ends it sooner
 * (viewer-login.ts). Over HTTPS it is Secure: a browser never sends it over plain http.
 */
const setCookie = (name: string, value: string, secure: boolean): string => `${name}=${value}; HttpOnly; SameSite=Strict; Path=/${secure ? '; Secure' : ''}`;
const clearCookie = (name: string, secure: boolean): string => `${name}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0${secure ? '; Secure' : ''}`;

/** The one-time login link for this server (what the start line and `ptydeck url` print). */
export function loginLink(ctx: ApiContext): string {
  return `${ctx.baseUrl()}/?login=${ctx.logins.issueCode()}`;
}

export function viewerStaticDoor(viewerDir: string | null): Door {
  return {
    register(app: FastifyInstance, ctx: ApiContext) {
      const cookieName = (): string => viewerCookieName(ctx.guard.port());
      const page = (req: FastifyRequest, reply: FastifyReply) => {
        const q = req.query as { token?: string };
        if (typeof q.token === 'string') {
          // An admin token in a URL is no way in (it would stay in history): drop it, sign in nobody.
          const url = new URL(req.url, 'http://x');
          url.searchParams.delete('token');
          return reply.redirect(url.pathname + url.search, 302);
        }
        if (!viewerDir) {
          return reply
            .type('text/html; charset=utf-8')
            .send('<!doctype html><title>ptydeck</title><p>The viewer is not built. Run <code>npm run build</code> and reload.</p>');
        }
        return reply.type(TYPES['.html']).send(readFileSync(join(viewerDir, 'index.html')));
      };
      app.get('/', page);
      app.get('/terminal', page);

      app.get('/assets/*', async (req, reply) => {
        if (!viewerDir) throw new ApiError(404, 'The viewer is not built');
        const rel = (req.params as { '*': string })['*'];
        const file = normalize(join(viewerDir, 'assets', rel));
        if (!file.startsWith(join(viewerDir, 'assets') + sep) || !existsSync(file) || !statSync(file).isFile()) throw new ApiError(404, `No asset ${rel}`);
        reply.header('Cache-Control', 'public, max-age=31536000, immutable');
        return reply.type(TYPES[extname(file)] ?? 'application/octet-stream').send(readFileSync(file));
      });

      // The viewer's icon (the build copies src/renderer/public/ next to index.html).
      for (const name of ['favicon.ico', 'favicon.svg']) {
        app.get(`/${name}`, async (_req, reply) => {
          const file = viewerDir ? join(viewerDir, name) : null;
          if (!file || !existsSync(file)) throw new ApiError(404, `No ${name}: the viewer is not built`);
          reply.header('Cache-Control', 'public, max-age=86400');
          return reply.type(TYPES[extname(name)]).send(readFileSync(file));
        });
      }

      // Whether this page is signed in, asked before it shows anything: a 200 either way, because a 401
      // here is the expected answer for a fresh browser, and browsers log every 401 as a console error.
      app.get('/api/login', async (req) => {
        try {
          const p = authenticate(req.raw, { tokens: ctx.tokens, logins: ctx.logins, port: ctx.guard.port }, { upgrade: false, execd: false }).principal;
          return { signedIn: true, principal: p.name, kind: p.kind };
        } catch (err) {
          if (err instanceof ApiError && err.status === 401) return { signedIn: false };
          throw err;
        }
      });

      app.post('/api/login', { bodyLimit: LoginBodyBytes }, async (req, reply) => {
        const body = parse(LoginBody, bodyObject(req.body, 'native'), 'native');
        const who = body.token !== undefined ? ctx.tokens.authenticate(body.token) : null;
        if (who?.kind === 'agent') {
          throw new ApiError(401, `That is the token of the agent ${who.name}: agents use it on the API. The viewer needs the person's admin token (runtime.json, or \`ptydeck url\`)`, 'UNAUTHORIZED');
        }
        const ok = body.code !== undefined ? ctx.logins.redeemCode(body.code) : who?.kind === 'admin';
        if (!ok) {
          throw new ApiError(
            401,
            body.code !== undefined
              ? `That login link was used already or is older than ${ViewerLoginConstants.CodeLifetimeMs / 1000} s: run \`ptydeck url\` for a new one, or paste the admin token`
              : "That is not this server's admin token (see the runtime file, or run `ptydeck url` for a login link)",
            'UNAUTHORIZED',
          );
        }
        const { cookie, key } = ctx.logins.open();
        reply.header('Set-Cookie', setCookie(cookieName(), cookie, ctx.config.tls !== null));
        return { ok: true, key };
      });

      app.post('/api/logout', { bodyLimit: LoginBodyBytes }, async (req, reply) => {
        requireAdmin(req, 'Signing out');
        const body = parse(LogoutBody, bodyObject(req.body, 'native'), 'native');
        const mine = req.credential === 'viewer' ? cookieValue(req.headers.cookie, cookieName()) : null;
        let ended = 0;
        if (body.all) ended = ctx.logins.revokeAll();
        else if (mine) {
          ctx.logins.revoke(mine);
          ended = 1;
        } else throw new ApiError(400, 'This request carries no viewer session to end; send {"all": true} to end every viewer session', 'INVALID_REQUEST');
        if (mine) reply.header('Set-Cookie', clearCookie(cookieName(), ctx.config.tls !== null));
        return { ok: true, ended };
      });

      app.post('/api/login-links', async (req) => {
        requireAdmin(req, 'Login links');
        return { url: loginLink(ctx), expires_in_seconds: ViewerLoginConstants.CodeLifetimeMs / 1000 };
      });
    },
  };
}

