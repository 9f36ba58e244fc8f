// Electron entry: placeholder until the viewer issue wires the window.
import { app } from 'electron';
app.whenReady().then(() => undefined);
