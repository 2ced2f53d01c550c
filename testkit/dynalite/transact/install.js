#!/usr/bin/env node
// Adds TransactWriteItems to the installed dynalite (the package's postinstall; safe to run again).
// Fails with a non-zero exit when dynalite is not the exact version whose code this extends.
var fs = require('fs'),
  path = require('path')

var VERSION = '4.0.0'
var dynalite = path.join(__dirname, '..', 'node_modules', 'dynalite')

function fail (msg) {
  console.error('txbox dynalite transact install: ' + msg)
  process.exit(1)
}

function read (file) {
  try {
    return fs.readFileSync(path.join(dynalite, file), 'utf8')
  }
  catch (e) {
    fail('cannot read ' + path.join(dynalite, file) + ' (' + e.message + '); is dynalite ' + VERSION + ' installed?')
  }
}

// Replaces `expected` with `replacement` in `file` once; a file that already has `marker` is left as is.
function patch (file, marker, expected, replacement) {
  var text = read(file)
  if (text.includes(marker)) return
  if (!text.includes(expected))
    fail(path.join(dynalite, file) + ' does not contain the expected text ' + JSON.stringify(expected) +
      ' (dynalite ' + VERSION + ' has it)')
  fs.writeFileSync(path.join(dynalite, file), text.replace(expected, replacement))
}

var version = JSON.parse(read('package.json')).version
if (version !== VERSION)
  fail('expected dynalite ' + VERSION + ' in ' + dynalite + ' but found ' + version)

;[ 'actions', 'validations' ].forEach(function (dir) {
  fs.copyFileSync(path.join(__dirname, dir, 'transactWriteItems.js'), path.join(dynalite, dir, 'transactWriteItems.js'))
})

patch('index.js', '\'UpdateItem\', \'UpdateTable\', \'TransactWriteItems\' ]',
  '\'UpdateItem\', \'UpdateTable\' ]',
  '\'UpdateItem\', \'UpdateTable\', \'TransactWriteItems\' ]')

// The update-expression code is private to updateItem.js; export it (function declarations are hoisted).
if (!read('actions/updateItem.js').includes('function deepClone (obj) {'))
  fail(path.join(dynalite, 'actions/updateItem.js') + ' does not contain the expected text "function deepClone (obj) {"')
var exportLine = 'module.exports.applyUpdateExpression = applyUpdateExpression\nmodule.exports.deepClone = deepClone\n'
patch('actions/updateItem.js', exportLine, 'function applyUpdateExpression (sections, table, item) {',
  exportLine + '\nfunction applyUpdateExpression (sections, table, item) {')

console.log('txbox dynalite transact install: TransactWriteItems added to dynalite ' + VERSION)
