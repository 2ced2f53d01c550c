#!/usr/bin/env node
// Checks the installed TransactWriteItems against an in-process dynalite: node transact/check.js
var assert = require('assert'),
  http = require('http'),
  dynalite = require('dynalite')

var TABLE = 'txbox_check'
var server = dynalite({ createTableMs: 0 })
var port

function request (target, body) {
  var json = JSON.stringify(body)
  return new Promise(function (resolve, reject) {
    var req = http.request({
      host: '127.0.0.1',
      port: port,
      method: 'POST',
      path: '/',
      headers: {
        'Content-Type': 'application/x-amz-json-1.0',
        'Content-Length': Buffer.byteLength(json),
        'X-Amz-Target': 'DynamoDB_20120810.' + target,
        'X-Amz-Date': '20260101T000000Z',
        // dynalite checks the header's form, not the signature
        'Authorization': 'AWS4-HMAC-SHA256 Credential=check/20260101/us-east-1/dynamodb/aws4_request, ' +
          'SignedHeaders=host;x-amz-date;x-amz-target, Signature=00',
      },
    }, function (res) {
      var chunks = []
      res.on('data', function (c) { chunks.push(c) })
      res.on('end', function () {
        resolve({ status: res.statusCode, body: JSON.parse(Buffer.concat(chunks).toString() || '{}') })
      })
    })
    req.on('error', reject)
    req.end(json)
  })
}

async function ok (target, body) {
  var res = await request(target, body)
  assert.strictEqual(res.status, 200, target + ' failed: ' + JSON.stringify(res.body))
  return res.body
}

async function get (pk) {
  return (await ok('GetItem', { TableName: TABLE, Key: { pk: { S: pk } }, ConsistentRead: true })).Item
}

function put (pk, extra) {
  return { Put: Object.assign({ TableName: TABLE, Item: Object.assign({ pk: { S: pk } }, extra && extra.attrs) }, extra && extra.op) }
}

async function expectValidation (what, body, messagePart) {
  var res = await request('TransactWriteItems', body)
  assert.strictEqual(res.status, 400, what + ': ' + JSON.stringify(res.body))
  assert.strictEqual(res.body.__type, 'com.amazon.coral.validate#ValidationException', what + ': ' + JSON.stringify(res.body))
  assert.ok(res.body.message.includes(messagePart), what + ': ' + res.body.message)
  var msg = res.body.message.length > 120 ? res.body.message.slice(0, 60) + ' ... ' + res.body.message.slice(-55) : res.body.message
  console.log('ok  ' + what + ' -> ValidationException: ' + msg)
}

var checks = [
  async function twoPutsWriteBoth () {
    assert.deepStrictEqual(await ok('TransactWriteItems', { TransactItems: [ put('a'), put('b') ] }), {})
    assert.ok(await get('a'))
    assert.ok(await get('b'))
    console.log('ok  2-item Put transaction wrote both items')
  },

  async function failedConditionWritesNothing () {
    var res = await request('TransactWriteItems', {
      TransactItems: [ put('c'), put('a', { attrs: { v: { S: 'new' } }, op: { ConditionExpression: 'attribute_not_exists(pk)' } }) ],
    })
    assert.strictEqual(res.status, 400)
    assert.deepStrictEqual(res.body, {
      __type: 'com.amazonaws.dynamodb.v20120810#TransactionCanceledException',
      Message: 'Transaction cancelled, please refer cancellation reasons for specific reasons [None, ConditionalCheckFailed]',
      CancellationReasons: [ { Code: 'None' }, { Code: 'ConditionalCheckFailed', Message: 'The conditional request failed' } ],
    })
    assert.strictEqual(await get('c'), undefined, 'the first Put of a cancelled transaction was written')
    assert.strictEqual((await get('a')).v, undefined, 'the failed Put was written')
    console.log('ok  attribute_not_exists(pk) on an existing item cancelled the transaction, wrote neither: ' + res.body.Message)
  },

  async function conditionalUpdateApplies () {
    await ok('PutItem', { TableName: TABLE, Item: { pk: { S: 'n' }, n: { N: '1' }, state: { S: 'open' } } })
    await ok('TransactWriteItems', {
      TransactItems: [ {
        Update: {
          TableName: TABLE,
          Key: { pk: { S: 'n' } },
          UpdateExpression: 'SET n = n + :one',
          ConditionExpression: '#s = :open',
          ExpressionAttributeNames: { '#s': 'state' },
          ExpressionAttributeValues: { ':one': { N: '1' }, ':open': { S: 'open' } },
        },
      }, put('d') ],
    })
    assert.deepStrictEqual((await get('n')).n, { N: '2' })
    assert.ok(await get('d'))
    console.log('ok  Update SET n = n + :one conditioned on #s = :open applied (n 1 -> 2)')
  },

  async function deleteWithConditionCheck () {
    var body = {
      TransactItems: [
        { Delete: { TableName: TABLE, Key: { pk: { S: 'b' } }, ConditionExpression: 'attribute_exists(pk)' } },
        {
          ConditionCheck: {
            TableName: TABLE,
            Key: { pk: { S: 'n' } },
            ConditionExpression: 'n = :two',
            ExpressionAttributeValues: { ':two': { N: '2' } },
          },
        },
      ],
    }
    await ok('TransactWriteItems', body)
    assert.strictEqual(await get('b'), undefined)
    await ok('PutItem', { TableName: TABLE, Item: { pk: { S: 'b' } } })
    body.TransactItems[1].ConditionCheck.ExpressionAttributeValues[':two'] = { N: '3' }
    var res = await request('TransactWriteItems', body)
    assert.strictEqual(res.body.__type, 'com.amazonaws.dynamodb.v20120810#TransactionCanceledException')
    assert.deepStrictEqual(res.body.CancellationReasons.map(function (r) { return r.Code }), [ 'None', 'ConditionalCheckFailed' ])
    assert.ok(await get('b'), 'Delete of a cancelled transaction was applied')
    console.log('ok  Delete + ConditionCheck deleted when the check held, and deleted nothing when it did not')
  },

  async function duplicateItem () {
    await expectValidation('two operations on one item', {
      TransactItems: [ put('e'), { Delete: { TableName: TABLE, Key: { pk: { S: 'e' } } } } ],
    }, 'Transaction request cannot include multiple operations on one item')
    assert.strictEqual(await get('e'), undefined)
  },

  async function tooManyItems () {
    var items = []
    for (var i = 0; i < 101; i++) items.push(put('many' + i))
    await expectValidation('101 items', { TransactItems: items }, 'Member must have length less than or equal to 100')
    assert.strictEqual(await get('many0'), undefined)
  },

  async function noItems () {
    await expectValidation('0 items', { TransactItems: [] }, 'Member must have length greater than or equal to 1')
  },

  async function twoOperationsInOneEntry () {
    await expectValidation('an entry with Put and Delete', {
      TransactItems: [ Object.assign(put('f'), { Delete: { TableName: TABLE, Key: { pk: { S: 'f' } } } }) ],
    }, 'TransactItems can only contain one of Check, Put, Update or Delete')
  },

  async function subOperationValidation () {
    await expectValidation('an Update without UpdateExpression', {
      TransactItems: [ { Update: { TableName: TABLE, Key: { pk: { S: 'g' } } } } ],
    }, 'transactItems.1.member.update.updateExpression')
    await expectValidation('a Put with an unused expression value', {
      TransactItems: [ put('g', { op: { ConditionExpression: 'attribute_not_exists(pk)', ExpressionAttributeValues: { ':x': { S: 'x' } } } }) ],
    }, 'Value provided in ExpressionAttributeValues unused in expressions')
    await expectValidation('a Put missing its key', {
      TransactItems: [ { Put: { TableName: TABLE, Item: { other: { S: 'x' } } } } ],
    }, 'Missing the key pk in the item')
  },

  async function over4Mb () {
    var items = []
    for (var i = 0; i < 11; i++) items.push(put('big' + i, { attrs: { blob: { S: 'x'.repeat(390 * 1024) } } }))
    await expectValidation('11 items of 390 KB (over 4 MB)', { TransactItems: items }, 'exceeded the maximum allowed size of 4 MB')
    assert.strictEqual(await get('big0'), undefined)
  },

  async function itemOverMaxSize () {
    await expectValidation('a Put item over 400 KB', {
      TransactItems: [ put('huge', { attrs: { blob: { S: 'x'.repeat(400 * 1024) } } }) ],
    }, 'Item size has exceeded the maximum allowed size')
  },

  async function updateTypeErrorCancels () {
    var res = await request('TransactWriteItems', {
      TransactItems: [ put('i'), {
        Update: {
          TableName: TABLE,
          Key: { pk: { S: 'n' } },
          UpdateExpression: 'SET n = #s + :one',
          ExpressionAttributeNames: { '#s': 'state' },
          ExpressionAttributeValues: { ':one': { N: '1' } },
        },
      } ],
    })
    assert.strictEqual(res.body.__type, 'com.amazonaws.dynamodb.v20120810#TransactionCanceledException')
    assert.deepStrictEqual(res.body.CancellationReasons, [ { Code: 'None' },
      { Code: 'ValidationError', Message: 'An operand in the update expression has an incorrect data type' } ])
    assert.strictEqual(await get('i'), undefined)
    console.log('ok  an Update adding a number to a string cancelled the transaction: ' + res.body.Message)
  },

  async function missingTable () {
    var res = await request('TransactWriteItems', { TransactItems: [ put('h'), { Put: { TableName: 'no_such_table', Item: { pk: { S: 'h' } } } } ] })
    assert.strictEqual(res.body.__type, 'com.amazonaws.dynamodb.v20120810#ResourceNotFoundException')
    assert.strictEqual(await get('h'), undefined)
    console.log('ok  a missing table -> ResourceNotFoundException: ' + res.body.message)
  },

  async function concurrentTransactionsSerialize () {
    await ok('PutItem', { TableName: TABLE, Item: { pk: { S: 'x' }, n: { N: '0' } } })
    await ok('PutItem', { TableName: TABLE, Item: { pk: { S: 'y' }, n: { N: '0' } } })
    var incr = function (pk) {
      return { Update: { TableName: TABLE, Key: { pk: { S: pk } }, UpdateExpression: 'SET n = n + :one', ExpressionAttributeValues: { ':one': { N: '1' } } } }
    }
    var runs = []
    for (var i = 0; i < 50; i++) {
      runs.push(ok('TransactWriteItems', { TransactItems: i % 2 ? [ incr('x'), incr('y') ] : [ incr('y'), incr('x') ] }))
    }
    await Promise.all(runs)
    assert.deepStrictEqual([ (await get('x')).n, (await get('y')).n ], [ { N: '50' }, { N: '50' } ])
    console.log('ok  50 concurrent 2-item increments in opposite orders: no deadlock, none lost (x = y = 50)')
  },
]

async function main () {
  await new Promise(function (resolve) { server.listen(0, '127.0.0.1', resolve) })
  port = server.address().port
  await ok('CreateTable', {
    TableName: TABLE,
    AttributeDefinitions: [ { AttributeName: 'pk', AttributeType: 'S' } ],
    KeySchema: [ { AttributeName: 'pk', KeyType: 'HASH' } ],
    BillingMode: 'PAY_PER_REQUEST',
  })
  while ((await ok('DescribeTable', { TableName: TABLE })).Table.TableStatus != 'ACTIVE') {
    await new Promise(function (resolve) { setTimeout(resolve, 10) })
  }
  for (var check of checks) await check()
  console.log('all ' + checks.length + ' TransactWriteItems checks passed')
}

main().then(function () {
  server.close(function () { process.exit(0) })
}, function (err) {
  console.error('FAILED: ' + (err.stack || err))
  process.exit(1)
})
