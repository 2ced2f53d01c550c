// TransactWriteItems for dynalite 4.0.0: installed into node_modules/dynalite/validations by ../install.js.
// Each operation is typed and checked by dynalite's own PutItem/UpdateItem/DeleteItem validations.
var putItem = require('./putItem'),
  updateItem = require('./updateItem'),
  deleteItem = require('./deleteItem')

var OPERATIONS = {
  ConditionCheck: { validation: deleteItem, attrs: [ 'TableName', 'Key', 'ConditionExpression' ], required: 'ConditionExpression' },
  Put: { validation: putItem, attrs: [ 'TableName', 'Item', 'ConditionExpression' ] },
  Delete: { validation: deleteItem, attrs: [ 'TableName', 'Key', 'ConditionExpression' ] },
  Update: { validation: updateItem, attrs: [ 'TableName', 'Key', 'UpdateExpression', 'ConditionExpression' ], required: 'UpdateExpression' },
}

exports.OPERATIONS = Object.keys(OPERATIONS)

exports.types = {
  ClientRequestToken: {
    type: 'String',
    lengthGreaterThanOrEqual: 1,
    lengthLessThanOrEqual: 36,
  },
  ReturnConsumedCapacity: {
    type: 'String',
    enum: [ 'INDEXES', 'TOTAL', 'NONE' ],
  },
  ReturnItemCollectionMetrics: {
    type: 'String',
    enum: [ 'SIZE', 'NONE' ],
  },
  TransactItems: {
    type: 'List',
    notNull: true,
    lengthGreaterThanOrEqual: 1,
    lengthLessThanOrEqual: 100,
    children: {
      type: 'ValueStruct<TransactWriteItem>',
      children: Object.keys(OPERATIONS).reduce(function (children, name) {
        children[name] = {
          type: 'FieldStruct<' + name + '>',
          children: operationTypes(OPERATIONS[name]),
        }
        return children
      }, {}),
    },
  },
}

// The operation's members as its single-item action types them, plus the members every operation has.
function operationTypes (op) {
  var types = {}
  op.attrs.forEach(function (attr) {
    types[attr] = Object.assign({}, op.validation.types[attr])
  })
  if (op.required) types[op.required].notNull = true
  types.ExpressionAttributeNames = op.validation.types.ExpressionAttributeNames
  types.ExpressionAttributeValues = op.validation.types.ExpressionAttributeValues
  types.ReturnValuesOnConditionCheckFailure = {
    type: 'String',
    enum: [ 'ALL_OLD', 'NONE' ],
  }
  return types
}

exports.custom = function (data, store) {
  for (var i = 0; i < data.TransactItems.length; i++) {
    var item = data.TransactItems[i]
    var names = Object.keys(OPERATIONS).filter(function (name) { return item[name] != null })
    if (names.length != 1)
      return 'TransactItems can only contain one of Check, Put, Update or Delete'
    // Sets _condition/_updates on the operation, as for the single-item action
    var msg = OPERATIONS[names[0]].validation.custom(item[names[0]], store)
    if (msg) return msg
  }
}
