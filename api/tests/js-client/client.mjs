// better-auth's official client as a browser app holds it: one site's cookie jar (each
// Set-Cookie replaces its name; an empty value or Max-Age=0 clears it) and the app's Origin.
// Answers [client, jar].
import { createAuthClient } from "better-auth/client";

export function browserClient(url, base, plugins) {
  const origin = new URL(base).origin;
  const jar = new Map();
  const keep = (res) => {
    for (const c of res.headers.getSetCookie?.() ?? []) {
      const [pair] = c.split(";");
      const at = pair.indexOf("=");
      const name = pair.slice(0, at);
      const value = pair.slice(at + 1);
      if (value === "" || /Max-Age=0/i.test(c)) jar.delete(name);
      else jar.set(name, value);
    }
  };
  const client = createAuthClient({
    baseURL: url,
    plugins,
    fetchOptions: {
      headers: { origin },
      onRequest: (ctx) => {
        if (jar.size) ctx.headers.set("cookie", [...jar].map(([k, v]) => `${k}=${v}`).join("; "));
      },
      onResponse: (ctx) => keep(ctx.response),
    },
  });
  return [client, jar];
}
