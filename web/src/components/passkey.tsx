// Signing in with a passkey: the "Sign in with a passkey" button, and the browser's autofill
// on the sign-in page's email field (conditional mediation), both ending in a session.
import { useMutation } from "@tanstack/react-query";
import { useEffect, useRef } from "react";
import { api, unwrap } from "../api";
import { autofillSupported, cancelled, get, passkeysSupported } from "../webauthn";
import { ErrorBox } from "./ui";
import { useT } from "../i18n";

async function signInWith(conditional: boolean, signal?: AbortSignal): Promise<void> {
  const options = await unwrap(api.GET("/passkey/generate-authenticate-options"));
  const response = await get(options, conditional, signal);
  await unwrap(api.POST("/passkey/verify-authentication", { body: { response } }));
}

/** The button, and the autofill while the page is open; `onDone` runs once signed in. */
export function PasskeySignIn({ onDone }: { onDone: () => Promise<void> | void }) {
  const t = useT();
  const autofill = useRef<AbortController | null>(null);
  const startAutofill = () => {
    autofill.current?.abort();
    const ctl = new AbortController();
    autofill.current = ctl;
    void (async () => {
      if (!(await autofillSupported()) || ctl.signal.aborted) return;
      try {
        await signInWith(true, ctl.signal);
        await onDone();
      } catch {
        // Aborted, dismissed or refused: the button and the password stay.
      }
    })();
  };
  useEffect(() => {
    startAutofill();
    return () => autofill.current?.abort();
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, []);
  const button = useMutation({
    mutationFn: async () => {
      // One ceremony at a time: the autofill's waits no more.
      autofill.current?.abort();
      await signInWith(false);
    },
    onSuccess: async () => {
      await onDone();
    },
    onError: () => startAutofill(),
  });
  if (!passkeysSupported()) return null;
  const error = button.error && !cancelled(button.error) ? button.error : null;
  return (
    <div className="stack">
      <button type="button" className="secondary" disabled={button.isPending} onClick={() => button.mutate()}>
        {t("Sign in with a passkey")}
      </button>
      <ErrorBox error={error} />
    </div>
  );
}
