import { useState } from 'react';
import { BellIcon } from '../ui/icons';
import { browserNotificationsPossible } from './deliver';

const ASKED_KEY = 'ptydeck.notifications.asked';

function askedBefore(): boolean {
  try {
    return window.localStorage.getItem(ASKED_KEY) === '1';
  } catch {
    return false;
  }
}

/**
 * In a browser, notifications need the person's permission, and a browser only asks on a person's
 * action: this button asks, once. It shows while the answer is still open, and goes once given.
 */
export function NotifyButton() {
  const [permission, setPermission] = useState(() => (browserNotificationsPossible() ? Notification.permission : 'unavailable'));
  const [asked, setAsked] = useState(askedBefore);
  if (permission !== 'default' || asked) return null;
  const ask = async () => {
    setAsked(true);
    try {
      window.localStorage.setItem(ASKED_KEY, '1');
    } catch {
      // private mode: we may ask again next time, which is harmless
    }
    setPermission(await Notification.requestPermission());
  };
  return (
    <button type="button" className="btn btn-quiet" data-testid="notify-button" onClick={() => void ask()} title="Get a desktop notification when a program waits for you or a command fails">
      <BellIcon />
      <span className="btn-label">Notify me</span>
    </button>
  );
}
