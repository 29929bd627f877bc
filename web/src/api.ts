// The one way the app talks to the server: openapi-fetch with the types that
// openapi-typescript generated from the server's OpenAPI document (../openapi/schema.d.ts).
import createClient from "openapi-fetch";
import type { components, paths } from "../../openapi/schema";

export type Schemas = components["schemas"];
export type ErrorBody = Schemas["Error"];
/** Every code the server can answer with (an enum in the OpenAPI document). */
export type ErrorCode = ErrorBody["code"];
export type User = Schemas["User"];
export type Session = Schemas["Session"];
export type SessionWithUser = Schemas["SessionWithUser"];

/** Codes the app itself reports, for failures that never reached the server's answer. */
export type ClientErrorCode = "NETWORK_ERROR" | "UNEXPECTED_RESPONSE";

export const api = createClient<paths>({
  baseUrl: `${globalThis.location?.origin ?? "http://localhost"}/api/auth`,
  credentials: "same-origin",
  // Looked up at each call (not captured once), so tests can stand in for the network.
  fetch: (request: Request) => globalThis.fetch(request),
});

/** A refused request: the server's `{code, message}` (or a client-side code). */
export class ApiError extends Error {
  constructor(
    readonly code: ErrorCode | ClientErrorCode,
    message: string,
    readonly status: number,
    readonly details?: string[] | null,
    /** Seconds until a refused request may be tried again (`X-Retry-After` of a 429). */
    readonly retryAfter?: number,
  ) {
    super(message);
    this.name = "ApiError";
  }
}

type Answer<T> = { data?: T; error?: unknown; response: Response };

function isErrorBody(e: unknown): e is ErrorBody {
  return typeof e === "object" && e !== null && "code" in e && "message" in e;
}

/** Waits for a call and answers its data, or throws an {@link ApiError}. */
export async function unwrap<T>(call: Promise<Answer<T>>): Promise<T> {
  let answer: Answer<T>;
  try {
    answer = await call;
  } catch {
    throw new ApiError("NETWORK_ERROR", "network error", 0);
  }
  const { data, error, response } = answer;
  if (error !== undefined || !response.ok) {
    if (isErrorBody(error)) {
      const wait = Number(response.headers.get("x-retry-after"));
      throw new ApiError(error.code, error.message, response.status, error.details, wait > 0 ? wait : undefined);
    }
    throw new ApiError("UNEXPECTED_RESPONSE", `HTTP ${response.status}`, response.status);
  }
  return data as T;
}
