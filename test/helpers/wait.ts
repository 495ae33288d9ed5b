/** Polling for what a controller does in the background: true once `what` holds, false after `ms`. */
export async function waitFor(what: () => Promise<boolean> | boolean, ms = 10_000, everyMs = 50): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await what()) return true;
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
