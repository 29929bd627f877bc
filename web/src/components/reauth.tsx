// Asking for the password again before an action that needs a recent sign-in
// (SESSION_NOT_FRESH): the dialog, and the hook a card uses to open it and retry.
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { api, ApiError, unwrap } from "../api";
import { SESSION_KEY } from "../session";
import { isChallenge, SecondStep, type Challenge } from "./twofactor";
import { Dialog, ErrorBox, PasswordField, Submit } from "./ui";
import { useT } from "../i18n";

export function needsReauth(error: unknown): boolean {
  return error instanceof ApiError && (error.code === "SESSION_NOT_FRESH" || error.code === "SESSION_EXPIRED");
}

/** Asks for the password again (a fresh session), then calls `onDone`. */
export function ReauthDialog(props: { email: string; onDone: () => void; onClose: () => void }) {
  const [password, setPassword] = useState("");
  const [challenge, setChallenge] = useState<Challenge | null>(null);
  const t = useT();
  const qc = useQueryClient();
  const done = async () => {
    await qc.invalidateQueries({ queryKey: SESSION_KEY });
    props.onDone();
  };
  const signIn = useMutation({
    mutationFn: () => unwrap(api.POST("/sign-in/email", { body: { email: props.email, password } })),
    onSuccess: async (data) => {
      if (isChallenge(data)) setChallenge(data);
      else await done();
    },
  });
  if (challenge)
    return (
      <Dialog title="Confirm it's you" onClose={props.onClose}>
        <SecondStep challenge={challenge} onDone={done} />
      </Dialog>
    );
  return (
    <Dialog title="Confirm it's you" onClose={props.onClose}>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          signIn.mutate();
        }}
      >
        <p className="muted">{t("For your security, enter your password again to continue.")}</p>
        <PasswordField label="Password" name="password" autoComplete="current-password" value={password} onChange={setPassword} />
        <ErrorBox error={signIn.error} />
        <div className="row">
          <button type="button" className="secondary" onClick={props.onClose}>
            {t("Cancel")}
          </button>
          <Submit pending={signIn.isPending}>{t("Continue")}</Submit>
        </div>
      </form>
    </Dialog>
  );
}

/** The re-authentication prompt of a section: `ask(retry)` opens it; `retry` runs after. */
export function useReauth(email: string) {
  const [retry, setRetry] = useState<(() => void) | null>(null);
  const dialog = retry && (
    <ReauthDialog
      email={email}
      onClose={() => setRetry(null)}
      onDone={() => {
        setRetry(null);
        retry();
      }}
    />
  );
  return { dialog, open: retry !== null, ask: (again: () => void) => setRetry(() => again) };
}

