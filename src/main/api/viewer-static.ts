import { existsSync, readFileSync, statSync } from 'node:fs';
import { extname, join, normalize, resolve, sep } from 'node:path';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { ApiError } from './errors';
import { authenticate, VIEWER_COOKIE, viewerCookieValue } from './guards';
import type { ApiContext, Door } from './server';
import { bodyObject, parse } from './validate';

/**
 * The viewer as a web page: the built renderer at `/` and at `/terminal?session_id=` (AIO's WebShell
 * link). The page itself carries no secret; its API calls need the person's credential, which a first
 * visit with `?token=` exchanges for an HttpOnly, SameSite=Strict cookie and then drops from the URL
 * (so it stays out of history, and we log no URLs anyway). `POST /api/login {token}` does the same for
 * the page's own login form.
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

const LoginBody = z.object({ token: z.string().min(1).max(512) });

const cookieHeader = (value: string): string => `${VIEWER_COOKIE}=${value}; HttpOnly; SameSite=Strict; Path=/; Max-Age=31536000`;

export function viewerStaticDoor(viewerDir: string | null): Door {
  return {
    register(app: FastifyInstance, ctx: ApiContext) {
      const page = (req: FastifyRequest, reply: FastifyReply) => {
        const q = req.query as { token?: string };
        if (typeof q.token === 'string') {
          const url = new URL(req.url, 'http://x');
          url.searchParams.delete('token');
          url.searchParams.delete('login');
          const who = ctx.tokens.authenticate(q.token);
          if (who?.kind === 'admin') reply.header('Set-Cookie', cookieHeader(viewerCookieValue(ctx.tokens.adminToken)));
          // The login form says what was wrong with the link (LoginForm.tsx reads `login`).
          else url.searchParams.set('login', who ? 'agent' : 'wrong');
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
          const p = authenticate(req.raw, ctx.tokens, { upgrade: false, execd: false });
          return { signedIn: true, principal: p.name, kind: p.kind };
        } catch (err) {
          if (err instanceof ApiError && err.status === 401) return { signedIn: false };
          throw err;
        }
      });

      app.post('/api/login', async (req, reply) => {
        const body = parse(LoginBody, bodyObject(req.body, 'native'), 'native');
        const p = ctx.tokens.authenticate(body.token);
        if (p?.kind === 'agent') {
          throw new ApiError(401, `That is the token of the agent ${p.name}: agents use it on the API. The viewer needs the person's admin token (runtime.json, or \`ptydeck url\`)`, 'UNAUTHORIZED');
        }
        if (p?.kind !== 'admin') throw new ApiError(401, "That is not this server's admin token (see the runtime file or the URL printed at start)", 'UNAUTHORIZED');
        reply.header('Set-Cookie', cookieHeader(viewerCookieValue(ctx.tokens.adminToken)));
        return { ok: true };
      });
    },
  };
}
