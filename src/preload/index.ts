import { contextBridge, ipcRenderer } from 'electron';

// The viewer's API base and credential, handed over by the main process (context isolation on).
const bridge = ipcRenderer.sendSync('ptydeck:bootstrap') as { apiBase: string; token: string } | null;
contextBridge.exposeInMainWorld('ptydeck', {
  apiBase: bridge?.apiBase ?? '',
  token: bridge?.token ?? '',
  notify: (title: string, body: string) => ipcRenderer.send('ptydeck:notify', { title, body }),
});
