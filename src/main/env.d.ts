// `import path from './file.png?asset'` in the Electron entry: electron-vite copies the file into the build.
/// <reference types="electron-vite/node" />
