import { z } from 'zod';
import { titleProblem } from '../terminal/title';
import { ApiError, type Dialect } from './errors';

/**
 * Every request body passes a schema before it reaches the core. A refusal names the field and says
 * what was wrong with it; fields a schema does not know are ignored (as AIO and execd do).
 */
export function parse<S extends z.ZodType>(schema: S, value: unknown, dialect: Dialect, where: 'body' | 'query' = 'body'): z.infer<S> {
  const result = schema.safeParse(value ?? {});
  if (result.success) return result.data;
  const issues = result.error.issues.map((i) => ({
    loc: [where, ...i.path.map((p) => (typeof p === 'symbol' ? String(p) : p))],
    msg: describe(i),
    type: i.code,
  }));
  const summary = issues.map((i) => `${i.loc.join('.')}: ${i.msg}`).join('; ');
  // AIO speaks FastAPI's 422; execd and the native API answer 400.
  const status = dialect === 'aio' ? 422 : 400;
  return fail(status, `Invalid request: ${summary}`, issues);
}

function fail(status: number, message: string, issues: { loc: (string | number)[]; msg: string; type: string }[]): never {
  throw new ApiError(status, message, status === 422 ? 'VALIDATION_ERROR' : 'INVALID_REQUEST_BODY', issues);
}

function describe(issue: z.core.$ZodIssue): string {
  if (issue.code === 'invalid_type' && /received undefined/.test(issue.message)) return 'field required';
  return issue.message.replace(/^Invalid input: /, '');
}

// Building blocks shared by the doors' schemas.
export const seconds = z.number().finite().min(0).max(7 * 24 * 3600);
export const optSeconds = seconds.nullable().optional();
export const dimension = (max: number) => z.number().int().min(1).max(max);
export const envMap = z
  .record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'environment variable names are letters, digits and _'), z.string().refine((v) => !v.includes('\0'), 'must not contain NUL'))
  .refine((m) => Object.keys(m).length <= 256, 'at most 256 variables');
/** Text that goes to a terminal: any string, but no NUL bytes in paths. */
export const path = z.string().min(1).max(4096).refine((v) => !v.includes('\0'), 'must not contain NUL');
export const sessionId = z.string().min(1).max(128);
/** A session title: one line of text; an empty string (or null) clears it. */
export const title = z.string().superRefine((v, ctx) => {
  const problem = titleProblem(v);
  if (problem) ctx.addIssue({ code: 'custom', message: problem });
});

/** An empty or missing JSON body is `{}`; anything that is not an object is refused with a clear message. */
export function bodyObject(body: unknown, dialect: Dialect): Record<string, unknown> {
  if (body === undefined || body === null || body === '') return {};
  if (typeof body !== 'object' || Array.isArray(body)) {
    throw new ApiError(dialect === 'aio' ? 422 : 400, 'Invalid request: the body must be a JSON object', dialect === 'aio' ? 'VALIDATION_ERROR' : 'INVALID_REQUEST_BODY', [
      { loc: ['body'], msg: 'expected a JSON object', type: 'invalid_type' },
    ]);
  }
  return body as Record<string, unknown>;
}
