// Express 4, installed as `express4` to test the middleware on both majors. Its API surface used
// in tests (app, json, post, all, use) matches Express 5's types.
declare module 'express4' {
  import express = require('express');
  export = express;
}
