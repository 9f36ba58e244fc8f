import type { Attention } from './transitions';

/**
 * Desktop notifications: Electron's notifier when the preload offers one; in a browser, the
 * Notification API once the person has allowed it (asked once, on their click: NotifyButton.tsx).
 * Each attention key is delivered once, so a wait that flickers, or an update seen twice, is one
 * notification.
 */
export const NotifyPolicy = {
  /** Keys remembered; older ones are forgotten first (a session's waits are a handful an hour). */
  RememberKeys: 500,
} as const;

const delivered = new Set<string>();
let onClick: (sessionId: string) => void = () => undefined;

/** What clicking a browser notification does (open that session). */
export function onNotificationClick(handler: (sessionId: string) => void): void {
  onClick = handler;
}

export function browserNotificationsPossible(): boolean {
  return !window.ptydeck?.notify && typeof Notification !== 'undefined';
}

export function deliver(a: Attention): void {
  if (delivered.has(a.key)) return;
  delivered.add(a.key);
  if (delivered.size > NotifyPolicy.RememberKeys) delivered.delete(delivered.values().next().value as string);
  const bridge = window.ptydeck;
  if (bridge?.notify) {
    bridge.notify(a.title, a.body);
    return;
  }
  if (typeof Notification !== 'undefined' && Notification.permission === 'granted') {
    const n = new Notification(a.title, { body: a.body, tag: a.key });
    n.onclick = () => {
      window.focus();
      onClick(a.sessionId);
      n.close();
    };
  }
}
